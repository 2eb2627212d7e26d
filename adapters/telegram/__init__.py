"""adapters.telegram"""
