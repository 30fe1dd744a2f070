"""The convolution family: ``template.py`` plans it, ``source.py`` holds what it emits."""
