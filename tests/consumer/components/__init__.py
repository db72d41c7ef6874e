"""The platform team's own ``components`` package: not gpupools.

A consumer program's directory often has a package of this name. Before 0.2.0 gpupools itself was
imported as ``components``; the consumer check runs from this directory, so this package is first
on ``sys.path`` and would shadow a library installed under that name.
"""

OWNER = "platform-team"
