"""engine.macros"""
