"""Compatibility namespaces: ``rustgrad.compat.v1`` is the TF1-shaped static API."""
