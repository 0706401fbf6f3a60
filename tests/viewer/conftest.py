import os
import sys

# the tests' data helpers (viewer_data.py) import by name
sys.path.insert(0, os.path.dirname(__file__))
