"""adapters.llm"""
