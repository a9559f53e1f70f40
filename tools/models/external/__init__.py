"""External-model suite: one module per family; importing the package registers every model
in MODELS (name -> (source library, architecture, builder)) in the order the coverage page lists
them."""
from . import text, audio, vision, recurrent, generative  # noqa: F401 (registration order)
from .common import MODELS  # noqa: F401
