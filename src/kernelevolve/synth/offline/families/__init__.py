"""One template per operator family; ``analyze.py`` decides which writes a problem."""
