"""What each version of the training stack does: the one version-facts table (versions.yaml) and the
answers read from it (facts.py), for the versions rootrank.environment finds installed.

Engine side: `rootrank check`, its fixes, the hover and the docs ask it; it knows nothing of its front ends
and never imports the libraries it describes.
"""
