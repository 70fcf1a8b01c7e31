"""`python -m offsets.runtime NAMES`: where NAMES live in this interpreter, and how each answer
is earned."""
import sys

from . import main

sys.exit(main())
