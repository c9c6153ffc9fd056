# SPDX-License-Identifier: BSD-3-Clause
"""``python -m svmgeo`` runs the command line."""

import sys

from .cli import main

sys.exit(main())
