"""The API's page numbers: DRF's, except that an empty `page=` is an invalid page.

DRF reads `?page=` as page 1 (`query_params.get("page") or 1`), so a malformed query passes
as a valid one; here it answers 404 "Invalid page." like `?page=abc` does.
"""

from __future__ import annotations

from django.core.paginator import Paginator
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request


class StrictPageNumberPagination(PageNumberPagination):
    def get_page_number(self, request: Request, paginator: Paginator) -> str | int:
        page_number = request.query_params.get(self.page_query_param, 1)
        if page_number in self.last_page_strings:
            return paginator.num_pages
        return page_number
