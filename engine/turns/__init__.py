"""engine.turns"""
