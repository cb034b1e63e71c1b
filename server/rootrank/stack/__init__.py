"""The training stack the checked code runs with: which library versions are installed (environment.py) and
what each version does (facts.py, reading the one version-facts table, versions.yaml).

Engine side: `rootrank check`, the hover, the fixes and the docs ask it; it knows nothing of its front ends
and never imports the libraries it describes.
"""
