"""Seeded databases behind the bundled MCP servers (pinned interface 2).

``make_database(domain, seed, variant)`` returns ``{table: [row, ...]}`` with plain JSON values,
deterministically: the same arguments always give an equal database, on any machine (``random.Random``
seeded with a string uses SHA-512, not Python's salted ``hash``).

A *database instance* is a ``(seed, variant)`` pair. The seed draws the rows; the variant is a schema
variant: it changes the table sizes (``12 + 8 * (variant % 3)`` base rows), the identifier format
(``FL-1042``, ``FL1042``, ``fl_1042``, ``FL/1042`` for ``variant % 4``), the value pools (a different slice
of cities, names and catalogue words) and, for odd variants, adds an ``updated_at`` column to every table.
Tool logic (:mod:`synth.servers.catalog`) only relies on the columns all variants share.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from synth.errors import RecipeError

__all__ = ["DOMAINS", "HELDOUT_DOMAINS", "TRAIN_DOMAINS", "N_VARIANTS", "make_database", "db_id",
           "db_instances"]

DOMAINS: tuple[str, ...] = ("travel", "banking", "shop", "calendar", "tickets", "files", "recipes", "hr",
                            "weather", "library")
"""Every bundled server domain."""

HELDOUT_DOMAINS: tuple[str, ...] = ("weather", "library")
"""Domains reserved for evaluation: they never appear in training data."""

TRAIN_DOMAINS: tuple[str, ...] = tuple(d for d in DOMAINS if d not in HELDOUT_DOMAINS)
"""Domains synthesis draws from."""

N_VARIANTS = 4
"""Number of distinct schema variants (``variant`` is taken modulo this)."""

FIRST = ("Ana", "Ben", "Chen", "Dara", "Eli", "Fatima", "Goran", "Hana", "Ivan", "Jun", "Kira", "Luis", "Maya",
         "Nils", "Omar", "Priya", "Quinn", "Rosa", "Sami", "Tara", "Uma", "Vik", "Wen", "Yara", "Zoe", "Amit",
         "Bea", "Carl", "Dina", "Emre")
LAST = ("Ahmed", "Berg", "Costa", "Diaz", "Evans", "Fischer", "Garcia", "Huang", "Ito", "Jensen", "Kumar",
        "Lopez", "Meyer", "Novak", "Okafor", "Petrov", "Rossi", "Silva", "Tanaka", "Uddin", "Weber", "Young")
CITIES = ("Lisbon", "Oslo", "Nairobi", "Osaka", "Lima", "Toronto", "Cairo", "Seoul", "Dublin", "Austin",
          "Bengaluru", "Chennai", "Madrid", "Prague", "Hanoi", "Denver", "Perth", "Quito", "Riga", "Tunis",
          "Vienna", "Zurich", "Accra", "Bogota")
COUNTRY = {"Lisbon": "Portugal", "Oslo": "Norway", "Nairobi": "Kenya", "Osaka": "Japan", "Lima": "Peru",
           "Toronto": "Canada", "Cairo": "Egypt", "Seoul": "Korea", "Dublin": "Ireland", "Austin": "USA",
           "Bengaluru": "India", "Chennai": "India", "Madrid": "Spain", "Prague": "Czechia", "Hanoi": "Vietnam",
           "Denver": "USA", "Perth": "Australia", "Quito": "Ecuador", "Riga": "Latvia", "Tunis": "Tunisia",
           "Vienna": "Austria", "Zurich": "Switzerland", "Accra": "Ghana", "Bogota": "Colombia"}
AIRLINES = ("Aurora Air", "BlueJet", "Condor Lines", "Delta Sky", "Equinox", "FlyNorth")
HOTEL_WORDS = ("Harbor", "Grand", "Garden", "Summit", "Riverside", "Plaza", "Central", "Lotus")
CATEGORIES = ("laptops", "headphones", "books", "shoes", "kettles", "backpacks", "lamps", "monitors")
ADJ = ("Compact", "Classic", "Pro", "Eco", "Ultra", "Smart", "Urban", "Nordic")
MERCHANTS = ("GreenGrocer", "CityTransit", "BookNook", "CafeLuna", "PowerGrid", "StreamBox", "FitClub")
ROOM_WORDS = ("Maple", "Cedar", "Birch", "Oak", "Willow", "Aspen", "Pine", "Elm")
BUILDINGS = ("North", "South", "East", "West")
TEAMS = ("billing", "technical", "accounts", "shipping")
SUBJECTS = ("login fails", "refund request", "slow dashboard", "invoice missing", "password reset",
            "app crashes", "wrong charge", "export broken")
FOLDERS = ("reports", "invoices", "designs", "contracts", "photos", "notes", "backups", "slides")
MIMES = ("application/pdf", "text/plain", "image/png", "text/csv")
CUISINES = ("italian", "mexican", "japanese", "indian", "greek", "thai")
DISHES = ("stew", "salad", "curry", "pasta", "soup", "tacos", "risotto", "noodles")
INGREDIENTS = ("tomato", "onion", "garlic", "rice", "chickpeas", "spinach", "basil", "lentils", "tofu",
               "chicken", "lime", "ginger", "potato", "carrot", "feta", "olive oil")
DEPARTMENTS = ("engineering", "sales", "finance", "support", "legal", "design")
TITLES = ("analyst", "engineer", "manager", "specialist", "lead", "associate")
CONDITIONS = ("sunny", "cloudy", "rain", "snow", "fog", "windy")
ALERT_KINDS = ("heat", "flood", "storm", "frost")
GENRES = ("mystery", "history", "science", "poetry", "fantasy", "travel")
AUTHORS = ("Ada Byrne", "Bruno Hale", "Celia Moss", "Dev Raman", "Esme Laurent", "Femi Adeyemi", "Greta Lind")
BOOK_WORDS = ("River", "Silent", "Atlas", "Winter", "Glass", "Hidden", "Copper", "Northern")


class _Gen:
    """Value helpers of one database instance (the rng and the variant's pools and id format)."""

    def __init__(self, domain: str, seed: int, variant: int):
        self.rng = random.Random(f"toolscale-db:{domain}:{seed}:{variant}")
        self.variant = variant % N_VARIANTS
        self.n = 12 + 8 * (self.variant % 3)
        shift = 5 * self.variant
        self.cities = _rotate(CITIES, shift)[:16]
        self.first = _rotate(FIRST, shift)[:20]
        self.last = _rotate(LAST, 2 * self.variant)[:16]
        self._used: set[str] = set()

    def ident(self, prefix: str) -> str:
        """A fresh identifier in this variant's format."""
        while True:
            n = self.rng.randrange(1000, 10000)
            fmt = ("{p}-{n}", "{p}{n}", "{pl}_{n}", "{p}/{n}")[self.variant]
            out = fmt.format(p=prefix, pl=prefix.lower(), n=n)
            if out not in self._used:
                self._used.add(out)
                return out

    def name(self) -> str:
        return f"{self.rng.choice(self.first)} {self.rng.choice(self.last)}"

    def unique_names(self, k: int) -> list[str]:
        pool = [f"{f} {s}" for f in self.first for s in self.last]
        return self.rng.sample(pool, k)

    def date(self, month: int | None = None) -> str:
        m = month or self.rng.randrange(1, 13)
        return f"2026-{m:02d}-{self.rng.randrange(1, 29):02d}"

    def money(self, lo: float, hi: float) -> float:
        return round(self.rng.uniform(lo, hi), 2)


def _rotate(seq: tuple[str, ...], k: int) -> list[str]:
    k %= len(seq)
    return list(seq[k:] + seq[:k])


def _travel(g: _Gen) -> dict[str, list[dict]]:
    r = g.rng
    flights = []
    for _ in range(3 * g.n):
        o, d = r.sample(g.cities, 2)
        flights.append({"flight_id": g.ident("FL"), "airline": r.choice(AIRLINES), "origin": o, "destination": d,
                        "date": g.date(), "price": g.money(60, 900), "seats": r.randrange(0, 40)})
    hotels = [{"hotel_id": g.ident("HT"), "name": f"{r.choice(HOTEL_WORDS)} {c}", "city": c,
               "stars": r.randrange(2, 6), "nightly_rate": g.money(40, 400)}
              for c in g.cities for _ in range(2)]
    bookings = [{"booking_id": g.ident("BK"), "flight_id": f["flight_id"], "passenger": g.name(),
                 "price": f["price"], "status": "confirmed"} for f in r.sample(flights, g.n // 2)]
    return {"flights": flights, "hotels": hotels, "bookings": bookings, "reservations": []}


def _banking(g: _Gen) -> dict[str, list[dict]]:
    r = g.rng
    customers = [{"customer_id": g.ident("CU"), "name": nm, "city": r.choice(g.cities)}
                 for nm in g.unique_names(g.n)]
    accounts = []
    for c in customers:
        for kind in r.sample(("checking", "savings", "credit"), r.randrange(1, 3)):
            accounts.append({"account_id": g.ident("AC"), "customer_id": c["customer_id"], "kind": kind,
                             "balance": g.money(0, 20000), "currency": r.choice(("EUR", "USD", "GBP"))})
    transactions = [{"transaction_id": g.ident("TX"), "account_id": a["account_id"], "amount": g.money(-500, 500),
                     "merchant": r.choice(MERCHANTS), "date": g.date()}
                    for a in accounts for _ in range(r.randrange(1, 4))]
    return {"customers": customers, "accounts": accounts, "transactions": transactions, "transfers": []}


def _shop(g: _Gen) -> dict[str, list[dict]]:
    r = g.rng
    products = [{"product_id": g.ident("PR"), "name": f"{r.choice(ADJ)} {cat[:-1]}", "category": cat,
                 "price": g.money(5, 1500), "stock": r.randrange(0, 60)}
                for cat in CATEGORIES for _ in range(max(2, g.n // 6))]
    names = g.unique_names(g.n)
    customers = [{"customer_id": g.ident("CS"), "name": nm,
                  "email": nm.lower().replace(" ", ".") + "@example.com"} for nm in names]
    orders, shipments = [], []
    for _ in range(g.n):
        p, c = r.choice(products), r.choice(customers)
        q = r.randrange(1, 4)
        oid = g.ident("OR")
        orders.append({"order_id": oid, "customer_id": c["customer_id"], "product_id": p["product_id"],
                       "quantity": q, "total": round(q * p["price"], 2),
                       "status": r.choice(("paid", "shipped", "delivered"))})
        shipments.append({"shipment_id": g.ident("SH"), "order_id": oid, "carrier": r.choice(("DHL", "UPS", "PostNL")),
                          "status": r.choice(("in transit", "delivered", "label created")), "eta": g.date()})
    return {"products": products, "customers": customers, "orders": orders, "shipments": shipments}


def _calendar(g: _Gen) -> dict[str, list[dict]]:
    r = g.rng
    users = [{"user_id": g.ident("US"), "name": nm, "email": nm.lower().replace(" ", ".") + "@corp.example",
              "timezone": r.choice(("UTC", "CET", "EST", "JST"))} for nm in g.unique_names(g.n)]
    rooms = [{"room_id": g.ident("RM"), "name": f"{w} room", "capacity": r.choice((4, 6, 8, 12, 20)),
              "building": r.choice(BUILDINGS)} for w in ROOM_WORDS]
    events = [{"event_id": g.ident("EV"), "owner_id": u["user_id"], "title": r.choice(("standup", "review",
              "planning", "1:1", "retro")), "date": g.date(), "start": f"{r.randrange(8, 18):02d}:00",
               "room_id": r.choice(rooms)["room_id"]} for u in users for _ in range(r.randrange(1, 3))]
    return {"users": users, "rooms": rooms, "events": events, "invitations": []}


def _tickets(g: _Gen) -> dict[str, list[dict]]:
    r = g.rng
    customers = [{"customer_id": g.ident("CL"), "name": nm, "plan": r.choice(("free", "team", "enterprise"))}
                 for nm in g.unique_names(g.n)]
    agents = [{"agent_id": g.ident("AG"), "name": g.name(), "team": t} for t in TEAMS for _ in range(2)]
    tickets = [{"ticket_id": g.ident("TK"), "customer_id": c["customer_id"], "subject": r.choice(SUBJECTS),
                "priority": r.choice(("low", "normal", "high")), "status": r.choice(("open", "pending")),
                "agent_id": None} for c in customers for _ in range(r.randrange(1, 3))]
    return {"customers": customers, "agents": agents, "tickets": tickets, "comments": []}


def _files(g: _Gen) -> dict[str, list[dict]]:
    r = g.rng
    folders = [{"folder_id": g.ident("FD"), "name": nm, "owner": g.name()} for nm in FOLDERS]
    files = [{"file_id": g.ident("FI"), "folder_id": f["folder_id"],
              "name": f"{f['name'][:-1]}_{r.randrange(1, 99):02d}.{ext}", "size_kb": r.randrange(1, 5000),
              "mime": mime, "modified": g.date()}
             for f in folders for mime, ext in r.sample(list(zip(MIMES, ("pdf", "txt", "png", "csv"))), 3)]
    return {"folders": folders, "files": files, "shares": []}


def _recipes(g: _Gen) -> dict[str, list[dict]]:
    r = g.rng
    recipes = [{"recipe_id": g.ident("RC"), "title": f"{c.title()} {r.choice(DISHES)}", "cuisine": c,
                "minutes": r.choice((15, 20, 30, 45, 60, 90)), "servings": r.randrange(1, 7),
                "calories": r.randrange(250, 900)} for c in CUISINES for _ in range(max(2, g.n // 6))]
    ingredients = [{"recipe_id": rc["recipe_id"], "ingredient": ing, "grams": r.randrange(10, 400)}
                   for rc in recipes for ing in r.sample(INGREDIENTS, 4)]
    nutrition = [{"ingredient": ing, "kcal_per_100g": r.randrange(10, 900), "protein_g": round(r.uniform(0, 30), 1)}
                 for ing in INGREDIENTS]
    return {"recipes": recipes, "ingredients": ingredients, "nutrition": nutrition, "shopping_lists": []}


def _hr(g: _Gen) -> dict[str, list[dict]]:
    r = g.rng
    departments = [{"department_id": g.ident("DP"), "name": d, "budget": g.money(1e5, 2e6)} for d in DEPARTMENTS]
    employees = []
    for nm in g.unique_names(g.n):
        d = r.choice(departments)
        managers = [e for e in employees if e["department_id"] == d["department_id"]]
        employees.append({"employee_id": g.ident("EM"), "name": nm, "department_id": d["department_id"],
                          "title": r.choice(TITLES), "manager_id": managers[0]["employee_id"] if managers else None,
                          "leave_days": r.randrange(0, 30)})
    leave = [{"request_id": g.ident("LV"), "employee_id": e["employee_id"], "start_date": g.date(),
              "days": r.randrange(1, 10), "status": r.choice(("approved", "pending"))}
             for e in r.sample(employees, g.n // 2)]
    return {"departments": departments, "employees": employees, "leave_requests": leave}


def _weather(g: _Gen) -> dict[str, list[dict]]:
    r = g.rng
    stations = [{"station_id": g.ident("ST"), "city": c, "country": COUNTRY[c], "elevation_m": r.randrange(0, 2500)}
                for c in g.cities]
    observations = [{"station_id": s["station_id"], "date": f"2026-06-{d:02d}", "temp_c": round(r.uniform(-5, 35), 1),
                     "humidity": r.randrange(20, 100), "condition": r.choice(CONDITIONS)}
                    for s in stations for d in range(1, 8)]
    forecasts = [{"station_id": s["station_id"], "date": f"2026-06-{d:02d}", "high_c": round(r.uniform(5, 38), 1),
                  "low_c": round(r.uniform(-8, 20), 1), "precip_mm": round(r.uniform(0, 30), 1)}
                 for s in stations for d in range(8, 15)]
    countries = sorted({s["country"] for s in stations})
    alerts = [{"alert_id": g.ident("AL"), "country": c, "level": r.choice(("yellow", "orange", "red")),
               "kind": r.choice(ALERT_KINDS)} for c in countries for _ in range(r.randrange(1, 3))]
    return {"stations": stations, "observations": observations, "forecasts": forecasts, "alerts": alerts}


def _library(g: _Gen) -> dict[str, list[dict]]:
    r = g.rng
    books = [{"book_id": g.ident("BO"), "title": f"The {r.choice(BOOK_WORDS)} {r.choice(('Road', 'House', 'Map', 'Tide'))}",
              "author": r.choice(AUTHORS), "genre": r.choice(GENRES), "year": r.randrange(1950, 2026),
              "copies": r.randrange(0, 5)} for _ in range(3 * g.n)]
    members = [{"member_id": g.ident("ME"), "name": nm, "tier": r.choice(("basic", "plus"))}
               for nm in g.unique_names(g.n)]
    loans = [{"loan_id": g.ident("LN"), "book_id": r.choice(books)["book_id"], "member_id": m["member_id"],
              "due_date": g.date(), "status": "active"} for m in r.sample(members, g.n // 2)]
    return {"books": books, "members": members, "loans": loans}


_BUILDERS: dict[str, Callable[[_Gen], dict[str, list[dict]]]] = {
    "travel": _travel, "banking": _banking, "shop": _shop, "calendar": _calendar, "tickets": _tickets,
    "files": _files, "recipes": _recipes, "hr": _hr, "weather": _weather, "library": _library}


def make_database(domain: str, seed: int, variant: int = 0) -> dict[str, list[dict]]:
    """A fresh, deterministic database for one bundled server.

    Parameters
    ----------
    domain : str
        One of :data:`DOMAINS`.
    seed : int
        Draws the rows.
    variant : int
        Schema variant (taken modulo :data:`N_VARIANTS`): table sizes, id format, value pools, and an extra
        ``updated_at`` column on odd variants.

    Returns
    -------
    dict[str, list[dict]]
        Tables as lists of rows (JSON values only). A new object on every call, safe to mutate.

    Examples
    --------
    >>> db = make_database("travel", seed=0)
    >>> sorted(db)
    ['bookings', 'flights', 'hotels', 'reservations']
    >>> make_database("travel", 0) == make_database("travel", 0)
    True
    """
    if domain not in _BUILDERS:
        raise RecipeError(f"unknown server domain {domain!r}; expected one of {', '.join(DOMAINS)}")
    if isinstance(seed, bool) or not isinstance(seed, int) or not isinstance(variant, int) or variant < 0:
        raise RecipeError(f"database seed and variant must be integers (variant >= 0), got seed={seed!r}, "
                          f"variant={variant!r}")
    g = _Gen(domain, seed, variant)
    tables = _BUILDERS[domain](g)
    if g.variant % 2 == 1:
        for rows in tables.values():
            for row in rows:
                row["updated_at"] = g.date()
    return tables


def db_id(domain: str, seed: int, variant: int) -> str:
    """The name of one database instance, e.g. ``"travel:s3:v1"``."""
    return f"{domain}:s{seed}:v{variant % N_VARIANTS}"


def db_instances(k: int, base_seed: int) -> list[tuple[int, int]]:
    """The ``k`` database instances ``(seed, variant)`` a dataset with ``db_diversity = k`` draws from.

    Instance ``i`` has variant ``i % N_VARIANTS`` and seed ``base_seed * 1000 + i``, so each added instance
    differs in rows and cycles through the schema variants.
    """
    if k < 1:
        raise RecipeError(f"db_diversity must be >= 1, got {k}")
    return [(base_seed * 1000 + i, i % N_VARIANTS) for i in range(k)]
