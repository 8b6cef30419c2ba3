"""Pure, in-process tool logic of the bundled servers (pinned interface 10).

Each domain's server is a :class:`ServerDef` holding declarative :class:`ToolDef` s over the tables of
:func:`synth.servers.db.make_database`. Four generic kinds cover the tools:

``search``
    rows of ``table`` whose columns equal the given arguments -> ``{list_key: [projection...], "count": n}``;
``get``
    the row whose ``key`` column equals the argument -> the projected fields;
``create``
    validates referenced ids, inserts a row with a fresh id (a hash of the arguments, so the same call
    gives the same id in-process and over stdio) -> the new row's projected fields;
``update``
    sets fields on the row found by ``key`` -> the projected fields.

:func:`call_tool` runs a tool against a database (mutating it: the servers are stateful) and raises
:class:`synth.errors.ToolCallError` for an unknown tool, a missing/unknown/ill-typed argument or an
unknown id. The stdio servers (:mod:`synth.servers.run`) are thin wrappers over :func:`call_tool`.

``Param.source`` says where a task's user query can take a value from: ``"row"`` (a row of the tool's
own table, so a search finds something), ``"col:TABLE.COLUMN"``, ``"names"`` (a person's name),
``"int:LO:HI"``, ``"choice:A|B|C"``, or None (only an earlier tool's output can supply it: ids the user
cannot know).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Literal

from synth.errors import ToolCallError
from synth.models import ToolDoc
from synth.servers.db import DOMAINS

__all__ = ["Param", "ToolDef", "ServerDef", "SERVERS", "tool_docs", "call_tool", "get_tool"]

_JSON_TYPES = {"string": (str,), "integer": (int,), "number": (int, float)}


@dataclass(frozen=True)
class Param:
    """One tool argument."""

    name: str
    type: Literal["string", "integer", "number"]
    description: str
    required: bool = True
    source: str | None = "row"
    column: str | None = None
    """Table column it filters or references (defaults to ``name``)."""

    @property
    def col(self) -> str:
        return self.column or self.name

    def schema(self) -> dict[str, Any]:
        return {"type": self.type, "description": self.description}


@dataclass(frozen=True)
class ToolDef:
    """One tool of a bundled server (declarative; see the module docstring for the kinds)."""

    name: str
    description: str
    kind: Literal["search", "get", "create", "update"]
    table: str
    params: tuple[Param, ...]
    returns: tuple[str, ...]
    intent: str
    """Phrase for task queries, with ``{param}`` placeholders, e.g. ``"find flights from {origin}"``."""
    list_key: str = "results"
    key: str | None = None
    rename: dict[str, str] = field(default_factory=dict)
    refs: tuple[tuple[str, str, str], ...] = ()
    """For create: ``(param, table, column)`` that must exist."""
    copy: tuple[tuple[str, str, str], ...] = ()
    """For create: ``(from_param, field_in_referenced_row, new_field)`` copied from a referenced row."""
    set: dict[str, Any] = field(default_factory=dict)
    id_field: str | None = None
    id_prefix: str = "ID"
    total: tuple[str, str, str] | None = None
    """For create: ``(new_field, price_field, qty_param)``: new_field = price * qty."""

    def output_fields(self) -> list[str]:
        names = [self.rename.get(c, c) for c in self.returns]
        if self.kind == "search":
            return [self.list_key, "count", *names]
        if self.kind == "create" and self.id_field and self.id_field not in names:
            names = [self.id_field, *names]
        return names

    def phrase(self, args: dict[str, Any]) -> str:
        """The intent with argument values filled in, e.g. ``"book flight FL-1042 for Ana Costa"``;
        arguments missing from ``args`` read as references (``"that flight"``)."""
        from synth.plans import render_intent

        return render_intent(self.intent, lambda p: ("q", args[p]) if p in args else ("ref", None))

    def doc(self, server: str) -> ToolDoc:
        props = {p.name: p.schema() for p in self.params}
        req = [p.name for p in self.params if p.required]
        destructive = self.kind == "update" and any(v in self.name for v in ("cancel", "delete", "close"))
        return ToolDoc(server=server, name=self.name, description=self.description,
                       parameters={"type": "object", "properties": props, "required": req},
                       output_fields=self.output_fields(), read_only=self.kind in ("search", "get"),
                       destructive=destructive)


@dataclass(frozen=True)
class ServerDef:
    """One bundled server: a domain, a description and its tools."""

    domain: str
    description: str
    tools: tuple[ToolDef, ...]

    def tool(self, name: str) -> ToolDef:
        for t in self.tools:
            if t.name == name:
                return t
        raise ToolCallError(f"unknown tool {name!r} on server {self.domain!r}; expected one of "
                            f"{', '.join(t.name for t in self.tools)}")


def P(name, type_, description, required=True, source="row", column=None) -> Param:  # noqa: N802 - terse specs
    return Param(name, type_, description, required, source, column)


_S, _I, _N = "string", "integer", "number"

SERVERS: dict[str, ServerDef] = {
    "travel": ServerDef("travel", "Flight and hotel booking for travellers.", (
        ToolDef("search_flights", "Search flights between two cities; returns matching flights with id, airline, "
                "date and price.", "search", "flights",
                (P("origin", _S, "Departure city name"), P("destination", _S, "Arrival city name"),
                 P("date", _S, "Travel date YYYY-MM-DD (optional filter)", required=False)),
                ("flight_id", "airline", "date", "price"), "find flights from {origin} to {destination}",
                list_key="flights"),
        ToolDef("get_flight", "Get one flight's details (route, date, price, free seats) by flight_id.", "get",
                "flights", (P("flight_id", _S, "Flight identifier from search_flights", source=None),),
                ("flight_id", "airline", "origin", "destination", "date", "price", "seats"),
                "check the details of {flight_id|that flight}", key="flight_id",
                rename={"destination": "arrival_city", "seats": "seats_left"}),
        ToolDef("book_flight", "Book a seat on a flight for a passenger; returns the booking_id.", "create",
                "bookings", (P("flight_id", _S, "Flight identifier to book", source=None),
                             P("passenger", _S, "Passenger full name", source="names")),
                ("booking_id", "flight_id", "passenger", "price", "status"),
                "book {flight_id|that flight} for {passenger}", id_field="booking_id", id_prefix="BK",
                refs=(("flight_id", "flights", "flight_id"),), copy=(("flight_id", "price", "price"),),
                set={"status": "confirmed"}),
        ToolDef("get_booking", "Look up a flight booking by booking_id.", "get", "bookings",
                (P("booking_id", _S, "Booking identifier", source="col:bookings.booking_id"),),
                ("booking_id", "flight_id", "passenger", "price", "status"), "look up {booking_id|that booking}",
                key="booking_id"),
        ToolDef("cancel_booking", "Cancel a flight booking by booking_id; returns the new status.", "update",
                "bookings", (P("booking_id", _S, "Booking identifier to cancel", source="col:bookings.booking_id"),),
                ("booking_id", "status"), "cancel {booking_id|that booking}", key="booking_id",
                set={"status": "cancelled"}),
        ToolDef("search_hotels", "Search hotels in a city; returns hotels with id, name, stars and nightly rate.",
                "search", "hotels", (P("city", _S, "City name, e.g. a flight's arrival city"),),
                ("hotel_id", "name", "stars", "nightly_rate"), "find a hotel in {city|the arrival city}", list_key="hotels"),
        ToolDef("book_hotel", "Reserve a hotel for a guest for some nights; returns reservation_id and total.",
                "create", "reservations", (P("hotel_id", _S, "Hotel identifier from search_hotels", source=None),
                                           P("guest", _S, "Guest full name", source="names"),
                                           P("nights", _I, "Number of nights", source="int:1:6")),
                ("reservation_id", "hotel_id", "guest", "nights", "total"),
                "reserve {hotel_id|that hotel} for {guest} for {nights} nights", id_field="reservation_id",
                id_prefix="RS", refs=(("hotel_id", "hotels", "hotel_id"),), total=("total", "nightly_rate", "nights")),
    )),
    "banking": ServerDef("banking", "Retail banking: customers, accounts, transactions and transfers.", (
        ToolDef("find_customer", "Find bank customers by full name; returns customer_id and city.", "search",
                "customers", (P("name", _S, "Customer full name"),), ("customer_id", "name", "city"),
                "find the customer {name}", list_key="customers"),
        ToolDef("list_accounts", "List a customer's accounts with account_id, kind and balance.", "search",
                "accounts", (P("customer_id", _S, "Customer identifier from find_customer", source=None),),
                ("account_id", "kind", "balance"), "list the accounts of {customer_id|that customer}",
                list_key="accounts"),
        ToolDef("get_balance", "Get the balance and currency of one account by account_id.", "get", "accounts",
                (P("account_id", _S, "Account identifier", source=None),), ("account_id", "balance", "currency"),
                "get the balance of {account_id|that account}", key="account_id"),
        ToolDef("list_transactions", "List recent transactions of an account.", "search", "transactions",
                (P("account_id", _S, "Account identifier", source=None),),
                ("transaction_id", "amount", "merchant", "date"), "list the transactions of {account_id|that account}",
                list_key="transactions"),
        ToolDef("get_transaction", "Get one transaction's details by transaction_id.", "get", "transactions",
                (P("transaction_id", _S, "Transaction identifier", source=None),),
                ("transaction_id", "account_id", "amount", "merchant", "date"),
                "show {transaction_id|that transaction}", key="transaction_id"),
        ToolDef("transfer_funds", "Transfer an amount between two accounts; returns transfer_id and status.",
                "create", "transfers", (P("from_account_id", _S, "Source account_id", source=None),
                                        P("to_account_id", _S, "Destination account_id", source=None),
                                        P("amount", _N, "Amount to transfer", source="int:10:500")),
                ("transfer_id", "from_account_id", "to_account_id", "amount", "status"),
                "transfer {amount} from {from_account_id|the first account} to {to_account_id|the second account}",
                id_field="transfer_id", id_prefix="TR", refs=(("from_account_id", "accounts", "account_id"),
                                                              ("to_account_id", "accounts", "account_id")),
                set={"status": "completed"}),
    )),
    "shop": ServerDef("shop", "Online shop: product catalogue, customers, orders and shipments.", (
        ToolDef("search_products", "Search products by category; returns product_id, name and price.", "search",
                "products", (P("category", _S, "Product category, e.g. laptops"),), ("product_id", "name", "price"),
                "find {category}", list_key="products"),
        ToolDef("get_product", "Get a product's details and stock by product_id.", "get", "products",
                (P("product_id", _S, "Product identifier from search_products", source=None),),
                ("product_id", "name", "category", "price", "stock"), "check the stock of {product_id|that product}",
                key="product_id"),
        ToolDef("find_customer", "Find a shop customer by email; returns customer_id and name.", "search",
                "customers", (P("email", _S, "Customer email address"),), ("customer_id", "name"),
                "find the customer with email {email}", list_key="customers"),
        ToolDef("place_order", "Place an order of a product for a customer; returns order_id and total.", "create",
                "orders", (P("customer_id", _S, "Customer identifier from find_customer", source=None),
                           P("product_id", _S, "Product identifier", source=None),
                           P("quantity", _I, "Units to order", source="int:1:4")),
                ("order_id", "customer_id", "product_id", "quantity", "total", "status"),
                "order {quantity} of {product_id|that product} for {customer_id|that customer}", id_field="order_id",
                id_prefix="OR", refs=(("customer_id", "customers", "customer_id"),
                                      ("product_id", "products", "product_id")),
                total=("total", "price", "quantity"), set={"status": "paid"}),
        ToolDef("get_order", "Get an order's status and total by order_id.", "get", "orders",
                (P("order_id", _S, "Order identifier", source="col:orders.order_id"),),
                ("order_id", "customer_id", "product_id", "quantity", "total", "status"),
                "check {order_id|that order}", key="order_id"),
        ToolDef("track_shipment", "Track the shipment of an order by order_id; returns carrier, status and eta.",
                "search", "shipments", (P("order_id", _S, "Order identifier", source="col:shipments.order_id"),),
                ("shipment_id", "carrier", "status", "eta"), "track the shipment of {order_id|that order}",
                list_key="shipments"),
        ToolDef("cancel_order", "Cancel an order by order_id.", "update", "orders",
                (P("order_id", _S, "Order identifier to cancel", source="col:orders.order_id"),),
                ("order_id", "status"), "cancel {order_id|that order}", key="order_id", set={"status": "cancelled"}),
    )),
    "calendar": ServerDef("calendar", "Team calendar: people, meeting rooms and events.", (
        ToolDef("find_user", "Find a colleague by full name; returns user_id, email and timezone.", "search",
                "users", (P("name", _S, "Full name"),), ("user_id", "email", "timezone"), "find {name}",
                list_key="users"),
        ToolDef("list_events", "List a user's events with event_id, title, date and start time.", "search",
                "events", (P("user_id", _S, "User identifier from find_user", source=None, column="owner_id"),),
                ("event_id", "title", "date", "start"), "list the events of {user_id|that person}", list_key="events"),
        ToolDef("get_event", "Get an event's details (owner, room, time) by event_id.", "get", "events",
                (P("event_id", _S, "Event identifier", source=None),),
                ("event_id", "title", "date", "start", "room_id", "owner_id"), "open {event_id|that event}",
                key="event_id"),
        ToolDef("find_room", "Find meeting rooms in a building; returns room_id, name and capacity.", "search",
                "rooms", (P("building", _S, "Building name, e.g. North"),), ("room_id", "name", "capacity"),
                "find a room in the {building} building", list_key="rooms"),
        ToolDef("create_event", "Create an event owned by a user in a room; returns event_id.", "create", "events",
                (P("user_id", _S, "Owner's user_id", source=None), P("room_id", _S, "Room identifier", source=None),
                 P("title", _S, "Event title", source="choice:sync|demo|kickoff|workshop"),
                 P("date", _S, "Date YYYY-MM-DD", source="col:events.date")),
                ("event_id", "title", "date", "room_id", "owner_id"),
                "schedule a {title} on {date} for {user_id|that person} in {room_id|that room}", id_field="event_id",
                id_prefix="EV", refs=(("user_id", "users", "user_id"), ("room_id", "rooms", "room_id")),
                copy=(("user_id", "user_id", "owner_id"),)),
        ToolDef("invite_attendee", "Invite a user to an event; returns invitation_id.", "create", "invitations",
                (P("event_id", _S, "Event identifier", source=None), P("user_id", _S, "Invitee user_id", source=None)),
                ("invitation_id", "event_id", "user_id", "status"), "invite {user_id|that person} to {event_id|that event}",
                id_field="invitation_id", id_prefix="IN",
                refs=(("event_id", "events", "event_id"), ("user_id", "users", "user_id")), set={"status": "sent"}),
    )),
    "tickets": ServerDef("tickets", "Customer support desk: customers, tickets, agents and comments.", (
        ToolDef("find_customer", "Find a support customer by name; returns customer_id and plan.", "search",
                "customers", (P("name", _S, "Customer full name"),), ("customer_id", "plan"),
                "look up the customer {name}", list_key="customers"),
        ToolDef("list_tickets", "List a customer's tickets with ticket_id, subject, priority and status.", "search",
                "tickets", (P("customer_id", _S, "Customer identifier", source=None),),
                ("ticket_id", "subject", "priority", "status"), "list the tickets of {customer_id|that customer}",
                list_key="tickets"),
        ToolDef("get_ticket", "Get a ticket by ticket_id.", "get", "tickets",
                (P("ticket_id", _S, "Ticket identifier", source=None),),
                ("ticket_id", "subject", "priority", "status", "agent_id"), "open {ticket_id|that ticket}",
                key="ticket_id"),
        ToolDef("find_agent", "Find support agents of a team; returns agent_id and name.", "search", "agents",
                (P("team", _S, "Team name, e.g. billing"),), ("agent_id", "name"), "find an agent on the {team} team",
                list_key="agents"),
        ToolDef("assign_ticket", "Assign a ticket to an agent.", "update", "tickets",
                (P("ticket_id", _S, "Ticket identifier", source=None), P("agent_id", _S, "Agent identifier", source=None)),
                ("ticket_id", "agent_id", "status"), "assign {ticket_id|that ticket} to {agent_id|that agent}",
                key="ticket_id", refs=(("agent_id", "agents", "agent_id"),), set={"status": "assigned"}),
        ToolDef("add_comment", "Add a comment to a ticket; returns comment_id.", "create", "comments",
                (P("ticket_id", _S, "Ticket identifier", source=None),
                 P("text", _S, "Comment text", source="choice:Looking into it|Fixed in the next release|"
                                                        "Please send a screenshot")),
                ("comment_id", "ticket_id", "text"), "comment '{text}' on {ticket_id|that ticket}", id_field="comment_id",
                id_prefix="CM", refs=(("ticket_id", "tickets", "ticket_id"),)),
        ToolDef("close_ticket", "Close a ticket by ticket_id.", "update", "tickets",
                (P("ticket_id", _S, "Ticket identifier", source=None),), ("ticket_id", "status"),
                "close {ticket_id|that ticket}", key="ticket_id", set={"status": "closed"}),
    )),
    "files": ServerDef("files", "Cloud drive: folders, files and sharing.", (
        ToolDef("find_folder", "Find a folder by name; returns folder_id and owner.", "search", "folders",
                (P("name", _S, "Folder name, e.g. reports"),), ("folder_id", "owner"), "find the {name} folder",
                list_key="folders"),
        ToolDef("list_files", "List the files in a folder with file_id, name and size.", "search", "files",
                (P("folder_id", _S, "Folder identifier", source=None),), ("file_id", "name", "size_kb", "mime"),
                "list the files in {folder_id|that folder}", list_key="files"),
        ToolDef("get_file_metadata", "Get a file's metadata (name, size, type, modified) by file_id.", "get",
                "files", (P("file_id", _S, "File identifier", source=None),),
                ("file_id", "name", "size_kb", "mime", "modified", "folder_id"), "inspect {file_id|that file}",
                key="file_id"),
        ToolDef("share_file", "Share a file with a person at a permission level; returns share_id.", "create",
                "shares", (P("file_id", _S, "File identifier", source=None),
                           P("user", _S, "Person to share with", source="names"),
                           P("permission", _S, "view or edit", source="choice:view|edit")),
                ("share_id", "file_id", "user", "permission"), "share {file_id|that file} with {user} ({permission})",
                id_field="share_id", id_prefix="SHR", refs=(("file_id", "files", "file_id"),)),
        ToolDef("move_file", "Move a file into another folder.", "update", "files",
                (P("file_id", _S, "File identifier", source=None),
                 P("folder_id", _S, "Destination folder identifier", source=None)),
                ("file_id", "folder_id", "name"), "move {file_id|that file} to {folder_id|that folder}", key="file_id",
                refs=(("folder_id", "folders", "folder_id"),)),
        ToolDef("delete_file", "Move a file to the trash by file_id.", "update", "files",
                (P("file_id", _S, "File identifier", source=None),), ("file_id", "name"), "delete {file_id|that file}",
                key="file_id", set={"folder_id": "trash"}),
    )),
    "recipes": ServerDef("recipes", "Recipe box: recipes, ingredients, nutrition and shopping lists.", (
        ToolDef("search_recipes", "Search recipes by cuisine; returns recipe_id, title and minutes.", "search",
                "recipes", (P("cuisine", _S, "Cuisine, e.g. thai"),), ("recipe_id", "title", "minutes"),
                "find {cuisine} recipes", list_key="recipes"),
        ToolDef("get_recipe", "Get a recipe's servings, time and calories by recipe_id.", "get", "recipes",
                (P("recipe_id", _S, "Recipe identifier", source=None),),
                ("recipe_id", "title", "servings", "minutes", "calories"), "open {recipe_id|that recipe}", key="recipe_id"),
        ToolDef("list_ingredients", "List a recipe's ingredients with grams.", "search", "ingredients",
                (P("recipe_id", _S, "Recipe identifier", source=None),), ("ingredient", "grams"),
                "list the ingredients of {recipe_id|that recipe}", list_key="ingredients"),
        ToolDef("get_nutrition", "Get nutrition facts of an ingredient per 100 g.", "get", "nutrition",
                (P("ingredient", _S, "Ingredient name", source="col:nutrition.ingredient"),),
                ("ingredient", "kcal_per_100g", "protein_g"), "get the nutrition facts of {ingredient|that ingredient}",
                key="ingredient"),
        ToolDef("create_shopping_list", "Create a shopping list for a recipe and an owner; returns list_id.",
                "create", "shopping_lists", (P("recipe_id", _S, "Recipe identifier", source=None),
                                             P("owner", _S, "Owner's name", source="names")),
                ("list_id", "recipe_id", "owner"), "make a shopping list of {recipe_id|that recipe} for {owner}",
                id_field="list_id", id_prefix="SL", refs=(("recipe_id", "recipes", "recipe_id"),)),
    )),
    "hr": ServerDef("hr", "Human resources: employees, departments and leave.", (
        ToolDef("find_employee", "Find an employee by full name; returns employee_id and department_id.", "search",
                "employees", (P("name", _S, "Employee full name"),), ("employee_id", "department_id", "title"),
                "find the employee {name}", list_key="employees"),
        ToolDef("get_employee", "Get an employee's title, department and manager by employee_id.", "get",
                "employees", (P("employee_id", _S, "Employee identifier", source=None),),
                ("employee_id", "name", "title", "department_id", "manager_id", "leave_days"),
                "get the record of {employee_id|that employee}", key="employee_id"),
        ToolDef("get_department", "Get a department's name and budget by department_id.", "get", "departments",
                (P("department_id", _S, "Department identifier", source=None),), ("department_id", "name", "budget"),
                "get {department_id|their department}", key="department_id"),
        ToolDef("list_leave", "List an employee's leave requests.", "search", "leave_requests",
                (P("employee_id", _S, "Employee identifier", source=None),),
                ("request_id", "start_date", "days", "status"), "list the leave requests of {employee_id|that employee}",
                list_key="requests"),
        ToolDef("request_leave", "File a leave request for an employee; returns request_id.", "create",
                "leave_requests", (P("employee_id", _S, "Employee identifier", source=None),
                                   P("start_date", _S, "First day YYYY-MM-DD", source="col:leave_requests.start_date"),
                                   P("days", _I, "Working days", source="int:1:10")),
                ("request_id", "employee_id", "start_date", "days", "status"),
                "request {days} days of leave from {start_date} for {employee_id|that employee}", id_field="request_id",
                id_prefix="LV", refs=(("employee_id", "employees", "employee_id"),), set={"status": "pending"}),
        ToolDef("approve_leave", "Approve a leave request; approver_id must be the employee's manager_id.", "update",
                "leave_requests", (P("request_id", _S, "Leave request identifier", source=None),
                                   P("approver_id", _S, "Approving manager's manager_id", source=None,
                                     column="employee_id")),
                ("request_id", "status"), "approve {request_id|that leave request} as {approver_id|their manager}", key="request_id",
                refs=(("approver_id", "employees", "employee_id"),), set={"status": "approved"}),
    )),
    "weather": ServerDef("weather", "Weather service: stations, observations, forecasts and alerts.", (
        ToolDef("find_station", "Find weather stations in a city; returns station_id, country and elevation.",
                "search", "stations", (P("city", _S, "City name"),), ("station_id", "country", "elevation_m"),
                "find the weather station in {city}", list_key="stations"),
        ToolDef("current_conditions", "Get the latest observation at a station.", "get", "observations",
                (P("station_id", _S, "Station identifier", source=None),),
                ("station_id", "date", "temp_c", "humidity", "condition"), "get current conditions at {station_id|that station}",
                key="station_id"),
        ToolDef("get_forecast", "Get the daily forecast of a station.", "search", "forecasts",
                (P("station_id", _S, "Station identifier", source=None),), ("date", "high_c", "low_c", "precip_mm"),
                "get the forecast for {station_id|that station}", list_key="days"),
        ToolDef("historical_observation", "Get a station's observation on a past date.", "search", "observations",
                (P("station_id", _S, "Station identifier", source=None),
                 P("date", _S, "Date YYYY-MM-DD", source="col:observations.date")),
                ("temp_c", "humidity", "condition"), "get the weather at {station_id|that station} on {date}",
                list_key="observations"),
        ToolDef("list_alerts", "List active weather alerts for a country.", "search", "alerts",
                (P("country", _S, "Country name"),), ("alert_id", "level", "kind"), "list weather alerts in {country|that country}",
                list_key="alerts"),
        ToolDef("get_alert", "Get one alert's details by alert_id.", "get", "alerts",
                (P("alert_id", _S, "Alert identifier", source=None),), ("alert_id", "country", "level", "kind"),
                "open {alert_id|that alert}", key="alert_id"),
    )),
    "library": ServerDef("library", "Public library: catalogue, members and loans.", (
        ToolDef("search_books", "Search books by author; returns book_id, title and year.", "search", "books",
                (P("author", _S, "Author full name"),), ("book_id", "title", "year"), "find books by {author}",
                list_key="books"),
        ToolDef("get_book", "Get a book's details and available copies by book_id.", "get", "books",
                (P("book_id", _S, "Book identifier", source=None),), ("book_id", "title", "genre", "year", "copies"),
                "check the availability of {book_id|that book}", key="book_id"),
        ToolDef("find_member", "Find a library member by name; returns member_id and tier.", "search", "members",
                (P("name", _S, "Member full name"),), ("member_id", "tier"), "find the member {name}",
                list_key="members"),
        ToolDef("checkout_book", "Lend a book to a member; returns loan_id and due date.", "create", "loans",
                (P("book_id", _S, "Book identifier", source=None), P("member_id", _S, "Member identifier", source=None)),
                ("loan_id", "book_id", "member_id", "status"), "lend {book_id|that book} to {member_id|that member}",
                id_field="loan_id", id_prefix="LN", refs=(("book_id", "books", "book_id"),
                                                          ("member_id", "members", "member_id")),
                set={"status": "active", "due_date": "2026-12-15"}),
        ToolDef("list_loans", "List a member's loans.", "search", "loans",
                (P("member_id", _S, "Member identifier", source=None),), ("loan_id", "book_id", "due_date", "status"),
                "list the loans of {member_id|that member}", list_key="loans"),
        ToolDef("renew_loan", "Renew a loan by loan_id; returns the new due date.", "update", "loans",
                (P("loan_id", _S, "Loan identifier", source=None),), ("loan_id", "due_date", "status"),
                "renew {loan_id|that loan}", key="loan_id", set={"due_date": "2027-01-15", "status": "renewed"}),
    )),
}
"""Every bundled server, by domain (same keys as :data:`synth.servers.db.DOMAINS`)."""

if tuple(SERVERS) != DOMAINS:  # a packaging invariant, checked at import
    raise RuntimeError("synth.servers.catalog.SERVERS and synth.servers.db.DOMAINS disagree")


def tool_docs(domain: str) -> list[ToolDoc]:
    """The tool documents of one bundled server, in declaration order."""
    return [t.doc(domain) for t in _server(domain).tools]


def get_tool(domain: str, name: str) -> ToolDef:
    """One tool's definition."""
    return _server(domain).tool(name)


def _server(domain: str) -> ServerDef:
    try:
        return SERVERS[domain]
    except KeyError:
        raise ToolCallError(f"unknown server domain {domain!r}; expected one of {', '.join(SERVERS)}") from None


def _check_args(tool: ToolDef, arguments: dict[str, Any]) -> None:
    if not isinstance(arguments, dict):
        raise ToolCallError(f"{tool.name}: arguments must be a JSON object, got {type(arguments).__name__}")
    known = {p.name: p for p in tool.params}
    for k in arguments:
        if k not in known:
            raise ToolCallError(f"{tool.name}: unknown argument {k!r}; expected {', '.join(known)}")
    for p in tool.params:
        v = arguments.get(p.name)
        if v is None:
            if p.required:
                raise ToolCallError(f"{tool.name}: missing required argument {p.name!r}")
            continue
        if isinstance(v, bool) or not isinstance(v, _JSON_TYPES[p.type]):
            raise ToolCallError(f"{tool.name}: argument {p.name!r} must be {p.type}, got {v!r}")


def _project(tool: ToolDef, row: dict[str, Any]) -> dict[str, Any]:
    return {tool.rename.get(c, c): row.get(c) for c in tool.returns}


def _find(rows: list[dict], column: str, value: Any, last: bool = False) -> dict | None:
    for row in (reversed(rows) if last else rows):
        if row.get(column) == value:
            return row
    return None


def _table(db: dict[str, list[dict]], name: str) -> list[dict]:
    try:
        return db[name]
    except KeyError:
        raise ToolCallError(f"database has no table {name!r} (wrong domain's database?)") from None


def call_tool(domain: str, db: dict[str, list[dict]], name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Run one tool of a bundled server against ``db`` (mutating it for create/update tools).

    Parameters
    ----------
    domain : str
        Server domain.
    db : dict[str, list[dict]]
        A database from :func:`synth.servers.db.make_database` for that domain.
    name : str
        Tool name.
    arguments : dict
        Arguments by name (JSON values).

    Returns
    -------
    dict
        The tool's result (JSON values only).

    Raises
    ------
    ToolCallError
        Unknown tool, missing/unknown/ill-typed argument, or an id that does not exist.

    Examples
    --------
    >>> from synth.servers.db import make_database
    >>> db = make_database("travel", 0)
    >>> f = db["flights"][0]
    >>> out = call_tool("travel", db, "search_flights", {"origin": f["origin"], "destination": f["destination"]})
    >>> f["flight_id"] in [x["flight_id"] for x in out["flights"]]
    True
    """
    tool = _server(domain).tool(name)
    _check_args(tool, arguments)
    args = {k: v for k, v in arguments.items() if v is not None}
    rows = _table(db, tool.table)
    for p_name, table, column in tool.refs:
        if _find(_table(db, table), column, args[p_name]) is None:
            raise ToolCallError(f"{tool.name}: no {table[:-1] if table.endswith('s') else table} with "
                                f"{column} {args[p_name]!r}")
    if tool.kind == "search":
        cols = {p.name: p.col for p in tool.params}
        hits = [r for r in rows if all(r.get(cols[k]) == v for k, v in args.items())]
        return {tool.list_key: [_project(tool, r) for r in hits[:10]], "count": len(hits)}
    if tool.kind in ("get", "update"):
        key_param = next(p for p in tool.params if p.name == tool.key)
        row = _find(rows, key_param.col, args[tool.key], last=True)
        if row is None:
            raise ToolCallError(f"{tool.name}: no record with {tool.key} {args[tool.key]!r}")
        if tool.kind == "update":
            for p in tool.params:
                if p.name != tool.key and p.name in args:
                    row[p.name] = args[p.name]
            row.update(tool.set)
        return _project(tool, row)
    # create
    digest = hashlib.sha1(json.dumps([name, args], sort_keys=True).encode()).hexdigest()
    new = {tool.id_field: f"{tool.id_prefix}-{int(digest[:8], 16) % 90000 + 10000}", **args, **tool.set}
    for p_name, src_field, new_field in tool.copy:
        ref = next(r for r in tool.refs if r[0] == p_name)
        new[new_field] = _find(_table(db, ref[1]), ref[2], args[p_name])[src_field]
    if tool.total:
        new_field, price_field, qty = tool.total
        ref = tool.refs[-1] if tool.kind == "create" else None
        price_row = _find(_table(db, ref[1]), ref[2], args[ref[0]]) if ref else None
        new[new_field] = round(float(price_row[price_field]) * float(args[qty]), 2) if price_row else None
    rows.append(new)
    return _project(tool, new)
