import sys

from agentproc.main import main

sys.exit(main())
