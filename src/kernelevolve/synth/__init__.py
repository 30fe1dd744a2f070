"""What writes the kernels: the offline synthesizer (``offline/``: Triton templates traced from
the reference, no LLM), an LLM (``llm/``: a chat endpoint or the local model), and the factory
that picks one for a run (``factory.py``) behind the one ``Synthesizer`` seam."""
