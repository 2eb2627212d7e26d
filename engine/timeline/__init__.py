"""engine.timeline"""
