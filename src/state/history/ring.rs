//! A fixed-capacity ring of values: the newest `capacity` kept, oldest first. Its one
//! allocation is made when it is created, so a full ring never grows.

/// The newest values pushed, at most `capacity` of them.
#[derive(Debug, Clone)]
pub(crate) struct Ring<T> {
    items: Vec<T>,
    /// The most it holds (a `Vec`'s own capacity may be larger than asked for).
    capacity: usize,
    /// Where the next push goes: once full, the oldest value's index.
    next: usize,
}

impl<T> Ring<T> {
    /// An empty ring that keeps the last `capacity` values (at least one).
    pub(crate) fn new(capacity: usize) -> Ring<T> {
        let capacity = capacity.max(1);
        Ring {
            items: Vec::with_capacity(capacity),
            capacity,
            next: 0,
        }
    }

    /// Adds `value`, dropping the oldest when full.
    pub(crate) fn push(&mut self, value: T) {
        let capacity = self.capacity;
        if self.items.len() < capacity {
            self.items.push(value);
        } else {
            self.items[self.next] = value;
        }
        self.next = (self.next + 1) % capacity;
    }

    /// The values, oldest first.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> {
        // Until full, `next` is the length and the first part is empty.
        let (newer, older) = self.items.split_at(self.next);
        older.iter().chain(newer)
    }

    /// How many values it holds.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.items.len()
    }

    /// How many values it can hold.
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }
}
