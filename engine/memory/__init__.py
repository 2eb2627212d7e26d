"""engine.memory"""
