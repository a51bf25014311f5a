class Node:
    __slots__ = ("key", "value", "prev", "next")

    def __init__(self, key=None, value=None):
        self.key = key
        self.value = value
        self.prev = None
        self.next = None


class DList:
    """Doubly linked list with sentinels; head side = most recently used."""

    def __init__(self):
        self.head = Node()
        self.tail = Node()
        self.head.next = self.tail
        self.tail.prev = self.head

    def push_front(self, node):
        node.prev = self.head
        node.next = self.head.next
        self.head.next.prev = node
        self.head.next = node

    def unlink(self, node):
        node.prev.next = node.next
        node.next.prev = node.prev

    def pop_back(self):
        node = self.tail.prev
        if node is self.head:
            return None
        self.unlink(node)
        return node
