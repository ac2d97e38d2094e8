import sys

from supervisor.resident.server import main

sys.exit(main())
