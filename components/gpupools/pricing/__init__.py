"""Prices and costs: what a fleet costs per hour and per month, and the order capacity is bought in.

* ``estimate``: pure arithmetic over the price catalog (``gpupools.catalog.prices``): the price of
  a node-hour per pool, the fleet's cost per hour at max (all Spot, fallbacks instead of Spot, and
  the ceiling with every group full), the idle cost, the monthly estimate of ``gpupools:cost`` and
  the budget check.
* ``azure_retail``, ``aws_price_list``: parsers of the clouds' public price sources.
* ``refresh`` (``python -m gpupools.pricing refresh``): rebuilds the catalog from those sources.
"""
