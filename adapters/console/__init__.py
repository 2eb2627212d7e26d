"""adapters.console"""
