"""The LLM-backed synthesizers: a chat endpoint through LangChain (``chat.py``), the prompts and
the parsing of replies (``reply.py``), and the local model and its server (``local/``)."""
