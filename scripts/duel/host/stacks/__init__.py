"""The software a cell runs in: eras and their locked environments, the images built from them
(the Debian and Python bases made here, the wheel cache), and whether an engine has them."""
