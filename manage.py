#!/usr/bin/env python
"""Django's command-line utility; a configuration error prints one line instead of a traceback."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "planner.settings")
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        execute_from_command_line(sys.argv)
    except ImproperlyConfigured as exc:
        print(f"planner: {exc}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
