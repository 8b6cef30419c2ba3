"""``python -m toolscale.cli``."""

import sys

from toolscale.cli import main

sys.exit(main())
