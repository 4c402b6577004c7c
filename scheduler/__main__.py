import sys

from scheduler.main import main

sys.exit(main())
