import sys
from pathlib import Path

BRIDGE = Path(__file__).resolve().parents[1]
REPO = BRIDGE.parent
sys.path.insert(0, str(BRIDGE))
