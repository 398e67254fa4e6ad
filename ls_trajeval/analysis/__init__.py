"""Consumers of the trajectory_eval export: report, agreement, prm, and for several annotators and judges the
disagreement finder, gold labels and align. Needs the ``analysis`` extra (pandas, numpy, matplotlib, statsmodels,
krippendorff, scipy; crowd-kit for Dawid-Skene). May import core; never studio, flows or cli.
"""
