from .models import Item
from .store import Store
