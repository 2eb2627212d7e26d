"""adapters.discord"""
