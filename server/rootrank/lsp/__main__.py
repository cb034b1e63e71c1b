"""`python -m rootrank.lsp`: start the language server over stdio."""

import gc
import sys

# Importing lsprotocol allocates a great many long-lived objects; collecting during that is wasted work.
# main() freezes what the imports made and turns the collector back on before serving.
gc.disable()

from rootrank.lsp.server import main  # noqa: E402

sys.exit(main())
