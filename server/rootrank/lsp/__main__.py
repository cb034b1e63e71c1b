"""`python -m rootrank.lsp`: start the language server over stdio."""

import sys

from rootrank.lsp.server import main

sys.exit(main())
