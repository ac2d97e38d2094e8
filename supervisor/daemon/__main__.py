import sys

from supervisor.daemon.supervisor import main

sys.exit(main())
