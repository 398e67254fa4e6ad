"""The Label Studio side: ``client`` (every API call, through label_studio_sdk) and ``localserver`` (an
embedded Label Studio for the demo and the tests). May import core; nothing here imports flows, analysis or cli.
"""
