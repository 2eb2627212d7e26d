"""engine.formats"""
