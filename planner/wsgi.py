"""WSGI entry point (gunicorn planner.wsgi).

After Django is set up, the URLconf (every view and API module) imported and the simulator's
policies and reclaim strategies loaded (else each worker's first decision pays ~350 ms of
imports), the objects that exist are frozen out of the cyclic garbage collector (`gc.freeze`): they
live as long as the process, and a full collection walking their ~200,000 objects cost a
request that happened to trigger it 100-150 ms (a reclaim decision allocates enough to
trigger one every few requests).
"""

import gc
import os
from importlib import import_module

from django.conf import settings
from django.core.wsgi import get_wsgi_application

from simulation.policies.base import registry
from simulation.reclaim import reclaim_strategies

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "planner.settings")

application = get_wsgi_application()
import_module(settings.ROOT_URLCONF)
registry()
reclaim_strategies()
gc.freeze()
