import sys

from supervisor.cli.main import main

sys.exit(main())
