"""Top-level routes: pages, the versioned REST API, its OpenAPI schema and offline docs."""

from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

urlpatterns = [
    path("", include("planner.core.urls")),
    path("", include("planner.dashboard.urls")),
    path("reproductions/", include("planner.reproductions.urls")),
    path("capacity/", include("planner.capacity.urls")),
    path("api/v1/", include("planner.core.api_urls")),
    path("api/v1/", include("planner.scenarios.api_urls")),
    path("api/v1/", include("planner.capacity.api_urls")),
    path("api/v1/", include("planner.live.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="swagger-ui"),
    path("admin/", admin.site.urls),
]

# JSON instead of Django's HTML error pages under /api/ (planner/core/errors.py).
handler400 = "planner.core.errors.bad_request"
handler403 = "planner.core.errors.permission_denied"
handler404 = "planner.core.errors.page_not_found"
handler500 = "planner.core.errors.server_error"
