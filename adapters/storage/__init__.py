"""adapters.storage"""
