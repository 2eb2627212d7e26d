"""engine.variables"""
