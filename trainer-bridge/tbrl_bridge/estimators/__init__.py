"""One module per advantage estimator of algorithms.json, named after its entry (see algorithms.py)."""
