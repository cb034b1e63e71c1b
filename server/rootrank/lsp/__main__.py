"""`python -m rootrank.lsp`: start the language server over stdio."""

import gc
import signal
import sys

# Ctrl-C (a server started by hand in a terminal) ends the process at once and quietly, during the imports
# too: as a KeyboardInterrupt it would print a traceback, and pygls' loop swallows it and then waits for its
# reader thread, which waits for stdin.
signal.signal(signal.SIGINT, signal.SIG_DFL)

# Importing lsprotocol allocates a great many long-lived objects; collecting during that is wasted work.
# main() freezes what the imports made and turns the collector back on before serving.
gc.disable()

from rootrank.lsp.server import main  # noqa: E402

sys.exit(main())
