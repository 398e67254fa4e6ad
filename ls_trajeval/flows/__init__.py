"""The flows behind the commands (convert, import, export, relayout, prelabels, demo): each a function over
core and studio that the CLI calls in a few lines. May import core, studio and converters; never cli.
"""
