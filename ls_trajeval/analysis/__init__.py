"""Consumers of the trajectory_eval export: report, agreement, prm. Needs the ``analysis`` extra (pandas,
numpy, matplotlib, statsmodels, krippendorff). May import core; never studio, flows or cli.
"""
