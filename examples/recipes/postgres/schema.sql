CREATE TABLE IF NOT EXISTS notes (id serial PRIMARY KEY, body text NOT NULL);
