"""TBRL Studio trainer bridge: runs on the Ray cluster.

Talks to the TypeScript core only through ``tbrl env-server`` (JSON-RPC over stdio), so the cluster
trains in the very environment, action parser and DepGPO code the editor debugs.
"""

__version__ = "0.1.0"
