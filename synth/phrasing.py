"""How users word requests: several phrasings per tool intent, openers, connectives, vague references.

The catalogue's ``intent`` of each bundled tool (:mod:`synth.servers.catalog`) is one phrasing;
:data:`ALTERNATIVES` adds others with the same placeholders (``{param}`` or ``{param|reference}``), so a
task draws one of several per call. Phrasings that ask for a field use the words
:func:`synth.rules.field_words` recognises ("stock", "price"), so the answer must state it and the judge
checks that it does.

A memorised-constant defect leaves a value out of the request; :func:`vague` words the gap as a user
would ("my usual cuisine", "the same passenger as last time"), never "the the usual X".
"""

from __future__ import annotations

import random

__all__ = ["ALTERNATIVES", "OPENERS", "CONNECTIVES", "PERSONAS", "COMPLICATIONS", "intents_for", "vague"]

ALTERNATIVES: dict[str, tuple[str, ...]] = {
    "travel.search_flights": ("look for flights from {origin} to {destination}",
                              "see which flights go from {origin} to {destination}"),
    "travel.get_flight": ("tell me how many seats are left on {flight_id|that flight}",
                          "get the price and free seats of {flight_id|that flight}"),
    "travel.book_flight": ("reserve a seat on {flight_id|that flight} for {passenger}",
                           "put {passenger} on {flight_id|that flight}"),
    "travel.get_booking": ("pull up {booking_id|that booking} and tell me its status",
                           "find {booking_id|that booking}"),
    "travel.cancel_booking": ("call off {booking_id|that booking}", "cancel {booking_id|that booking} for me"),
    "travel.search_hotels": ("look for hotels in {city|the arrival city}",
                             "see what hotels there are in {city|the arrival city}"),
    "travel.book_hotel": ("book {hotel_id|that hotel} for {guest}, {nights} nights",
                          "get {guest} a room at {hotel_id|that hotel} for {nights} nights"),
    "banking.find_customer": ("look up the customer {name}", "find {name} among our customers"),
    "banking.list_accounts": ("show the accounts of {customer_id|that customer}",
                              "see which accounts {customer_id|that customer} holds"),
    "banking.get_balance": ("tell me the balance of {account_id|that account}",
                            "check how much is in {account_id|that account}: the balance"),
    "banking.list_transactions": ("show the recent transactions on {account_id|that account}",
                                  "pull the transaction history of {account_id|that account}"),
    "banking.get_transaction": ("look at {transaction_id|that transaction}",
                                "get the details of {transaction_id|that transaction}"),
    "banking.transfer_funds": ("move {amount} from {from_account_id|the first account} to "
                               "{to_account_id|the second account}",
                               "send {amount} from {from_account_id|the first account} over to "
                               "{to_account_id|the second account}"),
    "shop.search_products": ("look for {category}", "see what {category} you have"),
    "shop.get_product": ("tell me how many units of {product_id|that product} are in stock",
                         "get the price and stock of {product_id|that product}"),
    "shop.find_customer": ("look up the customer whose email is {email}", "find who has the email {email}"),
    "shop.place_order": ("buy {quantity} of {product_id|that product} for {customer_id|that customer}",
                         "put in an order for {quantity} of {product_id|that product} for "
                         "{customer_id|that customer}"),
    "shop.get_order": ("tell me the status of {order_id|that order}", "look up {order_id|that order}"),
    "shop.track_shipment": ("tell me when {order_id|that order} will arrive",
                            "find out the carrier and eta of {order_id|that order}"),
    "shop.cancel_order": ("call off {order_id|that order}", "cancel {order_id|that order}, please"),
    "calendar.find_user": ("look up {name}", "find our colleague {name}"),
    "calendar.list_events": ("show what is on the calendar of {user_id|that person}",
                             "list the meetings of {user_id|that person}"),
    "calendar.get_event": ("look at {event_id|that event}", "get the room and time of {event_id|that event}"),
    "calendar.find_room": ("look for a meeting room in the {building} building",
                           "see which rooms the {building} building has and their capacity"),
    "calendar.create_event": ("book a {title} on {date} for {user_id|that person} in {room_id|that room}",
                              "set up a {title} on {date} in {room_id|that room} for {user_id|that person}"),
    "calendar.invite_attendee": ("add {user_id|that person} to {event_id|that event}",
                                 "send {user_id|that person} an invitation to {event_id|that event}"),
    "tickets.find_customer": ("find the customer {name}", "look up {name} in the support desk"),
    "tickets.list_tickets": ("show the tickets of {customer_id|that customer}",
                             "see what tickets {customer_id|that customer} has open"),
    "tickets.get_ticket": ("look at {ticket_id|that ticket} and tell me its priority",
                           "check the status of {ticket_id|that ticket}"),
    "tickets.find_agent": ("look for an agent on the {team} team", "find someone on the {team} team"),
    "tickets.assign_ticket": ("give {ticket_id|that ticket} to {agent_id|that agent}",
                              "hand {ticket_id|that ticket} over to {agent_id|that agent}"),
    "tickets.add_comment": ("post '{text}' on {ticket_id|that ticket}",
                            "leave the comment '{text}' on {ticket_id|that ticket}"),
    "tickets.close_ticket": ("mark {ticket_id|that ticket} as closed", "close {ticket_id|that ticket} for me"),
    "files.find_folder": ("look for the {name} folder", "locate the folder called {name}"),
    "files.list_files": ("show the files in {folder_id|that folder}", "see what is in {folder_id|that folder}"),
    "files.get_file_metadata": ("tell me the size of {file_id|that file}",
                                "check when {file_id|that file} was modified"),
    "files.share_file": ("give {user} {permission} access to {file_id|that file}",
                         "share {file_id|that file} with {user}, {permission} rights"),
    "files.move_file": ("put {file_id|that file} into {folder_id|that folder}",
                        "move {file_id|that file} over to {folder_id|that folder}"),
    "files.delete_file": ("trash {file_id|that file}", "remove {file_id|that file}"),
    "recipes.search_recipes": ("look for {cuisine} recipes", "suggest some {cuisine} dishes"),
    "recipes.get_recipe": ("tell me how long {recipe_id|that recipe} takes and its calories",
                           "check the servings of {recipe_id|that recipe}"),
    "recipes.list_ingredients": ("show what goes into {recipe_id|that recipe}",
                                 "list what I need for {recipe_id|that recipe}"),
    "recipes.get_nutrition": ("tell me the calories and protein of {ingredient|that ingredient}",
                              "look up the calories of {ingredient|that ingredient}"),
    "recipes.create_shopping_list": ("start a shopping list of {recipe_id|that recipe} for {owner}",
                                     "make {owner} a shopping list for {recipe_id|that recipe}"),
    "hr.find_employee": ("look up the employee {name}", "find {name} in the staff directory"),
    "hr.get_employee": ("pull up the record of {employee_id|that employee}",
                        "tell me who the manager of {employee_id|that employee} is"),
    "hr.get_department": ("look at {department_id|their department} and its budget",
                          "tell me the budget of {department_id|their department}"),
    "hr.list_leave": ("show the leave requests of {employee_id|that employee}",
                      "check what leave {employee_id|that employee} has asked for"),
    "hr.request_leave": ("file {days} days of leave starting {start_date} for {employee_id|that employee}",
                         "book {days} days off from {start_date} for {employee_id|that employee}"),
    "hr.approve_leave": ("sign off {request_id|that leave request} as {approver_id|their manager}",
                         "approve {request_id|that leave request}, with {approver_id|their manager} approving"),
    "weather.find_station": ("look up the weather station in {city}", "find which station covers {city}"),
    "weather.current_conditions": ("tell me the temperature at {station_id|that station} right now",
                                   "check the conditions and humidity at {station_id|that station}"),
    "weather.get_forecast": ("tell me the forecast high and low at {station_id|that station}",
                             "check if rain is expected at {station_id|that station}"),
    "weather.historical_observation": ("tell me the temperature at {station_id|that station} on {date}",
                                       "look up the conditions at {station_id|that station} on {date}"),
    "weather.list_alerts": ("show weather alerts for {country|that country}",
                            "check for warnings in {country|that country} and their level"),
    "weather.get_alert": ("look at {alert_id|that alert} and its level", "get the details of {alert_id|that alert}"),
    "library.search_books": ("look for books by {author}", "see what {author} has written"),
    "library.get_book": ("tell me how many copies of {book_id|that book} are available",
                         "check the copies of {book_id|that book}"),
    "library.find_member": ("look up the member {name}", "find {name} in the member list"),
    "library.checkout_book": ("check out {book_id|that book} to {member_id|that member}",
                              "loan {book_id|that book} to {member_id|that member}"),
    "library.list_loans": ("show the loans of {member_id|that member}",
                           "see what {member_id|that member} has borrowed and when it is due"),
    "library.renew_loan": ("extend {loan_id|that loan} and tell me the new due date", "renew {loan_id|that loan}, please"),
}
"""More phrasings per bundled tool (``server.tool``), beside the catalogue's own intent."""

OPENERS: tuple[str, ...] = (
    "Please {x}.", "Could you {x}?", "I need you to {x}.", "Help me {x}.", "Can you {x} for me?", "I'd like to {x}.",
    "Would you {x}?", "Quick one: {x}.", "{X}, please.", "{X}.", "I want to {x}.", "Hi! Please {x}.",
    "When you get a chance, {x}.", "Hey, can you {x}?", "I'm trying to {x}.", "Go ahead and {x}.",
    "Hello, I'd like you to {x}.", "Need a hand: {x}.", "Let's {x}.", "Could you please {x}?")
"""Sentence frames of a request (``{x}``: the steps, ``{X}``: the same capitalised)."""

CONNECTIVES: tuple[str, ...] = (", then ", ", and after that ", " and then ", "; once that's done, ",
                                ". After that, ", ", and when you have it, ", ". Then ", ", and next ")
"""Joints between the steps of a multi-step request."""

PERSONAS: tuple[str, ...] = ("I'm a support engineer handling a customer request.", "I'm new to this service.",
                             "I'm an operations manager and short on time.",
                             "I'm helping a colleague who is travelling.", "I'm auditing our records this week.",
                             "I run the front desk today.", "Writing from my phone, sorry for typos.",
                             "This is for a client call in ten minutes.")
"""Who is asking (a persona sentence before the request)."""

COMPLICATIONS: tuple[str, ...] = ("If anything fails, tell me exactly what went wrong.",
                                  "Keep the answer short.", "Use only what the tools return; do not guess.",
                                  "Please reply in Spanish.", "Please answer in French.", "Please answer in German.",
                                  "Be brief.", "Double-check the details before acting.")
"""Constraints added to a request; the scripted answer honours each (:mod:`synth.answers`)."""

_VAGUE = ("my usual {n}", "the same {n} as last time", "the {n} we always use", "our regular {n}",
          "the {n} from my last request")


def intents_for(server: str, tool: str, intent: str) -> tuple[str, ...]:
    """Every phrasing of a tool: its catalogue ``intent`` first, then :data:`ALTERNATIVES`."""
    return (intent, *ALTERNATIVES.get(f"{server}.{tool}", ()))


def vague(param: str, rng: random.Random, after_article: bool = False) -> str:
    """How a request words a value it leaves out (a memorised constant); without a leading article when the
    phrasing already has one (``find the {name} folder`` -> "find the folder we always use" is avoided by
    picking a form that reads after "the")."""
    noun = param.replace("_", " ").removesuffix(" id")
    if param in ("name", "user", "owner", "guest", "passenger", "author"):
        return rng.choice(("the person I asked about last time", "my usual contact", "the same person as before"))
    if after_article:
        return rng.choice(("same {n} as last time", "{n} we always use", "{n} from my last request")).format(n=noun)
    return rng.choice(_VAGUE).format(n=noun)
