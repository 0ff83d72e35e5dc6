import sys

from simulation.cli import main

sys.exit(main())
