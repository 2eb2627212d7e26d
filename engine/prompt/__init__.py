"""engine.prompt"""
