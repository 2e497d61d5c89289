"""pimcloud: gem5 full-system configurations and guest resource management for PIM servers.

Only the standard library may be imported at package level: gem5's embedded
interpreter imports this package and has nothing else installed.
"""

__version__ = "0.1.0"
