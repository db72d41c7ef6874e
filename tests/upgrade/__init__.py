"""The upgrade from a released gpupools to this checkout, as the engine would run it (issue 46).

``recorded``: every resource a stack program registers, for a released commit (its own code, in a
subprocess) and for this checkout; ``plan``: what the first ``up`` after upgrading does with them
(the engine's URN and alias matching, and the providers' replace rules); ``replay``: the Kubernetes
half of a recording as a program of its own, for the real engine in the sim tier.
"""
