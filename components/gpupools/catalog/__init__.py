"""Data tables of instance facts, each with its source noted in its module docstring."""
