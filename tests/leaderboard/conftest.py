import os
import sys

# The tests' own agent classes are named module:Class, as a user's would be.
sys.path.insert(0, os.path.dirname(__file__))
