"""`python -m rootrank`: the command-line interface."""

import sys

from rootrank.cli import main

sys.exit(main())
